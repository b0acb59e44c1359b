"""The outbox: on-commit puts written in the enqueuing transaction (`outbox.models`)."""

from typing import ClassVar

import django.utils.timezone
import django_qless.outbox.fields
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies: ClassVar[list[tuple[str, str]]] = [
        ('django_qless', '0001_initial'),
    ]

    operations = [
        migrations.CreateModel(
            name='OutboxEntry',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('connection', models.CharField(max_length=256)),
                ('queue', models.CharField(max_length=128)),
                ('jid', models.CharField(max_length=128, unique=True)),
                ('klass', models.CharField(max_length=256)),
                ('data', models.TextField()),
                ('not_before', models.FloatField()),
                ('priority', models.FloatField(null=True)),
                ('tags', django_qless.outbox.fields.JSONListField(default=list)),
                ('retries', models.IntegerField(null=True)),
                ('depends', django_qless.outbox.fields.JSONListField(default=list)),
                ('tracked', models.BooleanField(default=False)),
                ('unique', models.CharField(blank=True, default='', max_length=8)),
                ('task_backend', models.CharField(blank=True, default='', max_length=128)),
                ('created', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
            ],
            options={
                'verbose_name': 'outbox entry',
                'verbose_name_plural': 'outbox',
                'db_table': 'django_qless_outbox',
                'default_permissions': (),
            },
        ),
    ]
