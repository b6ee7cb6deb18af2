"""kiln.backends.mkldnn: kiln does not use oneDNN."""
enabled = True


def is_available():
    return False
