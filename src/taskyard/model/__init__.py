"""The vocabulary every layer shares: records that cross the storage seam, the errors
the system raises on purpose, and the rules that check definitions before anything is
stored (task types, schedules). Pure values; imports nothing but :mod:`taskyard.core`."""
