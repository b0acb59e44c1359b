"""Django-free qless client: script loading, client, queues, jobs."""
