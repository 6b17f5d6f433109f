"""The largest world a file or an argument may ask for (imports nothing, so the command line reads it cheaply).

A run's arrays are arrivals x session length; these ends keep a hostile world file or argument from
asking for unbounded work or memory before anything can check it."""
MAX_ARRIVALS = 1_000_000      # arrivals per run (attrs.arrivals, --arrivals)
MAX_SESSION = 1_000           # questions per session
MAX_BANK = 4_096              # CODuel's bank of recent questions (attrs.bank_size)
MAX_SEED = 2**63 - 1          # seeds are stored as int64 (click logs, netCDF attributes)
MAX_REFERENCE_SEEDS = 1_000   # seeds of the references one command computes in its own process
MAX_PAGE_ARRIVALS = 10_000    # arrivals a play or watch page embeds
MAX_CURVE_SEEDS = 1_000       # full runs behind a page's learning-curve band
MAX_TURNS = 5                 # PrefDisco: direct questions before the answer
MAX_RESAMPLE = 999_999         # real-session rosters: resample seeds (tdmodels.sample_roster)
MAX_FIT_ROUNDS = 10_000           # a population fit's budget of rounds (tutorduel fit --max-rounds)
