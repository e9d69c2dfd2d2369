"""Reports rendered from result files alone (no GPU, no DSL): plots and a markdown report."""
