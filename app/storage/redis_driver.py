"""What every Redis client of Novaberg tells the server about itself (CLIENT SETINFO).

With the library's version given, a new connection does not look it up: redis-py would
otherwise ask `importlib.metadata`, which scans every installed package — milliseconds of
CPU per connection and a crowd of short-lived objects, whose garbage collection held the
event loop for 10–15 ms during each backup (its worker thread connects anew).
"""

from __future__ import annotations

import redis
from redis.driver_info import DriverInfo

DRIVER_INFO = DriverInfo(name="redis-py", lib_version=redis.__version__)
