"""Code that runs in Airflow's own venv (Airflow 2 needs SQLAlchemy 1.4): it imports
nothing of taskyard, only ``bench.handlers``."""
