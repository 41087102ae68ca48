"""Stand-alone tools, each ``python -m tools.<name> --help``; none imports fairseq unless it must read
checkpoints (``average_checkpoints``)."""
