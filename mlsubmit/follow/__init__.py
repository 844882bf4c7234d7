"""After a create: wait for the job, stream its logs, cancel it, and turn interrupts into a clean exit.

Entry points: ``session.follow``, ``lifecycle.wait_for_job``, ``lifecycle.cancel_job``, ``logs.stream_job_logs``.
"""
