"""Pure measures: statistics with intervals, metrics, chance levels, caption metrics and answer parsing."""
