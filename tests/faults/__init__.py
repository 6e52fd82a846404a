"""Gate backends under faults: each one hangs, answers slowly, 5xx, garbage, resets, fails
TLS or lacks credentials, and the gate waits alone, saying why."""
