"""After a create only: wait for the job, stream its logs, show its trials, turn interrupts into a clean exit."""
