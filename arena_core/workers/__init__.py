"""Code that runs in worker processes of the app: kept out of the other packages so that a
worker imports only what it runs (a worker importing ``arena_core.backends`` held 240 MB)."""
