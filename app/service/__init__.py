"""Running the service: wiring settings to a store and an index, the embedded Redis, logs."""
