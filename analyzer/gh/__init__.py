"""Many jobs, many runs: fetch a run's job logs from GitHub (``gh``), merge a matrix's reports
(``merge``), and triage every failure as flaky, broken, new or known.

Room order: ``client`` (HTTP) and ``cache`` (files) feed ``fetch`` (which jobs, logs, scans);
``merge`` reads report.json files; both hand ``combine.ScannedJob``s to ``combine``, which asks
``triage`` (pure) to classify.
"""
