"""What a run touches on the machine itself, bounded (docs/security.md): child processes that never
outlive mlsubmit (the keeper, the subreaper sweep), temporary folders the janitor removes whatever happens, and
the one bounded reader of user files. Standard library only, below every other package but ``errors``."""
