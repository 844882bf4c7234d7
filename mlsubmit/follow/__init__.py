"""After a create only: wait for the job, stream its logs, cancel it, and turn interrupts into a clean exit.

Entry points: ``session.follow``, ``logs.stream_job_logs``; the poll engine they share is ``services.poll``
(``wait_for_job``, ``cancel_job``).
"""
