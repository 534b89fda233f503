# Builds and tests tensorc from a clean Debian 12, with the README's own command (`make test`
# installs the dependencies through scripts/install-deps.sh). Not built where it was written (no
# container engine there). No CUDA toolkit in the image: the CUDA backend is left out.
FROM debian:12
RUN apt-get update && apt-get install -y --no-install-recommends make && rm -rf /var/lib/apt/lists/*
WORKDIR /src/tensorc
COPY . .
RUN make test
