"""JavaScript / TypeScript: package.json, lockfiles, scripts, Node majors, its runners."""
