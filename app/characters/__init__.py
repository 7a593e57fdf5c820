"""The characters (design §11): their definitions and the one validator (`book`), the built-in
`nova`, the data dir's shared TOML files and each user's own (`store`), the catalog the API
lists (`catalog`), character cards in and out (`cards`, `pictures`, `macros`), lorebooks
(`lore`), and what a user does with them — in the page and on the command line (`service`,
`cli`)."""
