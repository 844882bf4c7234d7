"""mlsubmit: submit and run ML training jobs the way gcloud ai-platform does, faster and stricter."""

__version__ = "0.1.0"
