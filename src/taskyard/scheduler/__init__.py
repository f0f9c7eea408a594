"""The scheduling cycle and the daemon that runs it periodically and on wake-ups."""
