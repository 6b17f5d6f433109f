"""The project's benchmarks, run from one entry point in one process:

    python -m benchmarks.run                 # replay speed, sweep overhead, peak memory
    python -m benchmarks.run --long          # and the exact references (NUTS, the population Gibbs fit)
    python -m benchmarks.run --quick         # small sizes: checks that every benchmark runs (tests do this)

Every figure is a ratio against a reference measured in the same run (random pairs, an inline sweep,
batch Laplace, the smallest population), since absolute times vary between machines and runs.
"""
