"""Local bytes only: the trainer's deterministic sdist, its tarball and ignore files. Knows nothing of gs://.

Entry point: ``build.build_sdist(package_path, out_dir)``.
"""
