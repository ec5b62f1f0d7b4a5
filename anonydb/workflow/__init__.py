"""What users drive: release specs and the jobs that run them, reports, the privacy-utility
trade-off sweep, the evaluation of a release, progress display, the demo and the command line."""
