"""The Slurm launchers (``*.sbatch``) and their submit helper (``python -m slurm.submit``)."""
