"""What /proc says of a process, for the scripts that watch a recorder run (long-run.py,
switch-output-rss.py)."""


def rss_kib(pid):
    """The resident set of process pid in KiB (VmRSS), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None
