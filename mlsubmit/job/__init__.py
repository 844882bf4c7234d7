"""Job file + flags -> one validated ml v1 Job body. Pure: no network, no printing.
Entry points: ``validate.prepare``, ``jobfile.check_job_file``, ``rules.check_job``; ``vocab`` holds shared words."""
