"""Repairs of the installed fairseq, applied when the plugin is imported (each idempotent)."""
