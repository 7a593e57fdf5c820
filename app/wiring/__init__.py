"""The top of the house: the entry point (`cli`), the app factory that builds and connects
every service once (`server`), the browser side of a desktop start (`launch`), and the visible list of what the product asks a model for
(`purposes`). Nothing below imports from here."""
