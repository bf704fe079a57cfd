"""Admission: an ordered chain of plugins every write meets, whatever its verb path."""
