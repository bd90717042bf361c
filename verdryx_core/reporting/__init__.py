"""What a run looks like to people and to CI: summary lines, CI annotations and job
summaries, the HTML report."""
