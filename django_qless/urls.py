"""URLs of django_qless outside the admin: `path("qless/", include("django_qless.urls"))`."""

from django.urls import path

from .metrics.views import metrics

app_name = "django_qless"
urlpatterns = [path("metrics", metrics, name="metrics")]
