# oxyeval's `oxy` command in an image: docker build -t oxyeval .
#
#   docker run --rm --user "$(id -u)" -v "$PWD:/project" oxyeval test agents/ --min-accuracy 0.8
#
# or as the base of a build that gates on a project's tests (README, "Docker"):
#
#   FROM oxyeval
#   COPY --chown=oxy . /project
#   RUN oxy test agent.yml --format json --quiet --min-accuracy 0.8
#
# (add --no-history to that step to keep the run's history, with the models' answers, out of
# the layer; README, "Docker")
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The tests run as a user without root: a project's files and answers never need it.
RUN useradd --create-home --uid 10001 oxy && mkdir /project && chown oxy /project

WORKDIR /src
COPY . .
RUN pip install .

USER oxy
WORKDIR /project
ENTRYPOINT ["oxy"]
CMD ["--help"]
