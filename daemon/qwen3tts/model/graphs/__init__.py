"""model/graphs layer."""
