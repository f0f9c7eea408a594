"""Pure scheduling logic: states, placement, durations, locks, retries.

Nothing in this package performs I/O or reads a clock; callers pass time in.
The daemons, the tests and the simulator all call the same functions.
"""
