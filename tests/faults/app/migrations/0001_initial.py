"""The table of `Touch`."""

from typing import ClassVar

from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies: ClassVar[list[tuple[str, str]]] = []

    operations: ClassVar[list[migrations.operations.base.Operation]] = [
        migrations.CreateModel(
            name="Touch",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True,
                                           serialize=False, verbose_name="ID")),
                ("jid", models.CharField(max_length=100)),
                ("pid", models.IntegerField()),
            ],
        ),
    ]
