"""Building new counterfactual benchmarks: generators, filters, people in the loop, recipes."""
