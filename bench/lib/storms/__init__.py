"""Alert storms beyond the SMD one: generators (stdlib only) that turn shared data into the alert stream a
static-threshold rule set sends, each with its own ground truth, and a scorer with score_storm.py's metrics.
See README.md beside this file."""
