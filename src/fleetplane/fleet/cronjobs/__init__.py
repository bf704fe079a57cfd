"""The fleet-wide CronJob controller: CronJobs on the hub keep their schedule there and start each
run as one Job placed on one member cluster (see :mod:`.controller` and docs/placement.md)."""
