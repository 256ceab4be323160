"""Reports from stored runs: the text report, paired comparisons and the HTML page."""
