"""The characters (SPEC §11): their definitions, the built-in `nova`, the folder of TOML files
in the data dir, and the catalog the API lists."""
