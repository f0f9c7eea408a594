"""The worker: claims jobs placed on it, runs handlers in child processes, reports outcomes."""
