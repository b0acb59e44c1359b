"""The one enqueue path, from a checked call to the announcement after the put.

A caller (`@qless_job`'s `JobDefinition`, single and bulk; `QlessBackend`, single and bulk)
turns its calls into `core.submission.Submission`s and hands them, with what it wants done,
to `dispatch.send` as one `request.Enqueue`. `dispatch` alone chooses between immediate
mode, the outbox, an on-commit put and a put now; every put is built and sent by
`core.submission` (the outbox's puts at commit and by its sweep, and cron slots, too);
`announce` sends `job_enqueued` once a job is in Redis. `dispatch.send` first runs the
enqueue hooks (`core.metadata`), so their metadata is in the data an outbox row keeps.
"""
