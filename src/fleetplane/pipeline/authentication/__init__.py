"""Authentication: who sent this request. Each method is a module; ``chain`` unions them."""
