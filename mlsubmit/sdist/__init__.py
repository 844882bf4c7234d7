"""Local bytes only: the trainer's reproducible sdist, its tarball, ignore files and what never ships."""
