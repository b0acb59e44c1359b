"""The audit log of the admin's actions (`audit_log.models`) and its view permission."""

from typing import ClassVar

import django.utils.timezone
import django_qless.audit_log.fields
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies: ClassVar[list[tuple[str, str]]] = [
        ('django_qless', '0002_outbox'),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='overview',
            options={'default_permissions': (), 'managed': False, 'permissions': [('view_qless', 'Can view the qless pages'), ('view_job_data', 'Can see job data'), ('retry_jobs', 'Can retry and time out jobs'), ('cancel_jobs', 'Can cancel jobs'), ('edit_jobs', 'Can move jobs and change their priority, tags, tracking and dependencies'), ('manage_queues', 'Can pause queues, change queue settings and forget workers'), ('manage_recurring', 'Can edit and delete recurring jobs'), ('manage_config', 'Can change the qless config'), ('view_audit', 'Can view the qless audit log')], 'verbose_name': 'overview', 'verbose_name_plural': 'overview'},
        ),
        migrations.CreateModel(
            name='AuditEntry',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('time', models.DateTimeField(default=django.utils.timezone.now)),
                ('actor', models.CharField(max_length=150)),
                ('connection', models.CharField(max_length=256)),
                ('action', models.CharField(max_length=32)),
                ('kind', models.CharField(choices=[('job', 'job'), ('tag', 'jobs with a tag'), ('queue', 'queue'), ('worker', 'worker'), ('failure group', 'failure group'), ('recurring', 'recurring job'), ('cron', 'cron schedule'), ('config', 'config key')], max_length=16)),
                ('target', models.CharField(max_length=255)),
                ('message', models.TextField()),
                ('before', django_qless.audit_log.fields.JSONDictField(default=dict)),
                ('after', django_qless.audit_log.fields.JSONDictField(default=dict)),
            ],
            options={
                'verbose_name': 'audit entry',
                'verbose_name_plural': 'audit log',
                'db_table': 'django_qless_audit',
                'ordering': ('-time', '-id'),
                'default_permissions': (),
                'indexes': [models.Index(fields=['connection', 'time', 'id'], name='qless_audit_time'), models.Index(fields=['connection', 'actor', 'time'], name='qless_audit_actor'), models.Index(fields=['connection', 'action', 'time'], name='qless_audit_action'), models.Index(fields=['connection', 'kind', 'time'], name='qless_audit_kind'), models.Index(fields=['connection', 'target', 'time'], name='qless_audit_target')],
            },
        ),
    ]
