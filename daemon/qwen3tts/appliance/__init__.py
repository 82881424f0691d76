"""appliance layer."""
