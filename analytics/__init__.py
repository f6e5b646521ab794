"""Spark jobs over topics of web events: PV and UU, keywords, CTR, shares, and lag reports.

``events`` parses records into events, ``reports/`` holds one pure transform per report,
``source`` is the Kafka edge, ``runner`` runs one report, ``spark`` starts the session. Nothing
here imports Django: the console's job process (console/background/job_process.py) drives it, and
``python -m analytics`` runs a report from a shell.
"""
