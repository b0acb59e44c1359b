"""Placeholder models of the admin pages (no tables: managed = False)."""

from typing import ClassVar

from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies: ClassVar[list[tuple[str, str]]] = []

    operations = [
        migrations.CreateModel(
            name='Config',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
            ],
            options={
                'verbose_name': 'config',
                'verbose_name_plural': 'config',
                'managed': False,
                'default_permissions': (),
            },
        ),
        migrations.CreateModel(
            name='Failure',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
            ],
            options={
                'verbose_name': 'failure group',
                'verbose_name_plural': 'failed jobs',
                'managed': False,
                'default_permissions': (),
            },
        ),
        migrations.CreateModel(
            name='Job',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
            ],
            options={
                'verbose_name': 'job',
                'verbose_name_plural': 'jobs',
                'managed': False,
                'default_permissions': (),
            },
        ),
        migrations.CreateModel(
            name='Overview',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
            ],
            options={
                'verbose_name': 'overview',
                'verbose_name_plural': 'overview',
                'permissions': [('view_qless', 'Can view the qless pages'), ('view_job_data', 'Can see job data'), ('retry_jobs', 'Can retry and time out jobs'), ('cancel_jobs', 'Can cancel jobs'), ('edit_jobs', 'Can move jobs and change their priority, tags, tracking and dependencies'), ('manage_queues', 'Can pause queues, change queue settings and forget workers'), ('manage_recurring', 'Can edit and delete recurring jobs'), ('manage_config', 'Can change the qless config')],
                'managed': False,
                'default_permissions': (),
            },
        ),
        migrations.CreateModel(
            name='Queue',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
            ],
            options={
                'verbose_name': 'queue',
                'verbose_name_plural': 'queues',
                'managed': False,
                'default_permissions': (),
            },
        ),
        migrations.CreateModel(
            name='RecurringJob',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
            ],
            options={
                'verbose_name': 'recurring job',
                'verbose_name_plural': 'recurring jobs',
                'managed': False,
                'default_permissions': (),
            },
        ),
        migrations.CreateModel(
            name='Worker',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
            ],
            options={
                'verbose_name': 'worker',
                'verbose_name_plural': 'workers',
                'managed': False,
                'default_permissions': (),
            },
        ),
    ]
