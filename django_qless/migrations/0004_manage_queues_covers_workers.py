"""`manage_queues` also covers pausing, resuming and stopping workers: its description says so."""

from typing import Any, ClassVar

from django.apps import apps as installed
from django.db import migrations

NAME = "Can pause queues, change queue settings, and pause, resume, stop or forget workers"


def rename(apps: Any, schema_editor: Any) -> None:
    """Existing databases: Django creates missing permissions but never renames one."""
    if not apps.is_installed("django.contrib.auth"):
        return
    permission = apps.get_model("auth", "Permission")
    permission.objects.using(schema_editor.connection.alias).filter(
        content_type__app_label="django_qless", codename="manage_queues").update(name=NAME)


class Migration(migrations.Migration):

    dependencies: ClassVar[list[tuple[str, str]]] = [
        ('django_qless', '0003_audit'),
        # After auth's tables, where auth is installed (a worker-only project may lack it).
        *([('auth', '0001_initial')] if installed.is_installed("django.contrib.auth") else []),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='overview',
            options={'default_permissions': (), 'managed': False, 'permissions': [('view_qless', 'Can view the qless pages'), ('view_job_data', 'Can see job data'), ('retry_jobs', 'Can retry and time out jobs'), ('cancel_jobs', 'Can cancel jobs'), ('edit_jobs', 'Can move jobs and change their priority, tags, tracking and dependencies'), ('manage_queues', 'Can pause queues, change queue settings, and pause, resume, stop or forget workers'), ('manage_recurring', 'Can edit and delete recurring jobs'), ('manage_config', 'Can change the qless config'), ('view_audit', 'Can view the qless audit log')], 'verbose_name': 'overview', 'verbose_name_plural': 'overview'},
        ),
        migrations.RunPython(rename, migrations.RunPython.noop, elidable=True),
    ]
