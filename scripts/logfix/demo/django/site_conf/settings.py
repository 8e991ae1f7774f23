SECRET_KEY = "not-a-secret"
DEBUG = False
USE_TZ = True
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "polls"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
# Records every result in the same run (scripts/logfix/unittest_runner.py).
TEST_RUNNER = "site_conf.runner.RecordingRunner"
