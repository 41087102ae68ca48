"""The Slurm launchers (``*.sbatch``) and their submit helper (``python -m macaron_slurm.submit``)."""
