"""`huey_consumer` with gevent's monkey-patching applied first, as huey asks for `-k greenlet`.

    python huey_greenlet.py sys_huey.huey -k greenlet -w 200
"""

from gevent import monkey

monkey.patch_all()

import sys  # noqa: E402 - after the patching, as gevent wants

from huey.bin.huey_consumer import consumer_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(consumer_main())
