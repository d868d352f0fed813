# shellcheck shell=bash
# Shared by the hack/build-*.sh scripts: build a tool once per version into
# $THAW_CACHE/<name>-<version>/<name> and link it into a bin directory.
#
# The caller sets THAW_CACHE, CACHE_LINK_DIR (where the links go) and
# CACHE_LABEL (log prefix), then calls cache_lock once and cache_build per
# binary.

# cache_lock NAME: one build at a time per cache directory and NAME (two
# clones may share the cache).
cache_lock() {
	mkdir -p "$THAW_CACHE" "$CACHE_LINK_DIR"
	if command -v flock >/dev/null 2>&1; then
		exec 9>"$THAW_CACHE/.$1.lock"
		flock 9
	fi
}

# cache_build NAME VERSION FUNC: unless $THAW_CACHE/NAME-VERSION/NAME exists,
# runs FUNC OUTDIR NAME (which must write the binary OUTDIR/NAME) and moves
# the result into the cache; then links it into $CACHE_LINK_DIR.
cache_build() {
	local name="$1" version="$2" fn="$3"
	local dest="$THAW_CACHE/$name-$version"
	if [[ -x "$dest/$name" ]]; then
		echo "$CACHE_LABEL: $name $version cached in $dest"
	else
		local start=$SECONDS out
		out="$(mktemp -d "$THAW_CACHE/.build-$name.XXXXXX")"
		echo "$CACHE_LABEL: building $name $version (a cold build takes minutes)"
		"$fn" "$out" "$name"
		if [[ ! -x "$out/$name" ]]; then
			echo "$CACHE_LABEL: build of $name produced no binary" >&2
			exit 1
		fi
		rm -rf "$dest"
		mkdir -p "$dest"
		mv "$out/$name" "$dest/$name"
		rm -rf "$out"
		echo "$CACHE_LABEL: built $name $version in $((SECONDS - start))s"
	fi
	ln -sfn "$dest/$name" "$CACHE_LINK_DIR/$name"
}
