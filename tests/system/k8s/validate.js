// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// node validate.js MANIFEST...: every object in the manifests checked against the Kubernetes
// API's OpenAPI schema (kubernetes-models' validators: types, required fields, enumerations).
// Unknown fields pass the schema; test_containers.sh reads the fields it relies on by name.
"use strict";
const fs = require("fs");
const yaml = require("js-yaml");

let invalid = 0;
for (const file of process.argv.slice(2)) {
  for (const doc of yaml.loadAll(fs.readFileSync(file, "utf8"))) {
    if (!doc) continue;
    const name = `${file.split("/").pop()}: ${doc.kind} ${doc.metadata && doc.metadata.name}`;
    const [group, version] = doc.apiVersion.includes("/")
      ? doc.apiVersion.split("/")
      : ["", doc.apiVersion];
    let Model;
    try {
      Model = require(`kubernetes-models/${group ? group + "/" : ""}${version}/${doc.kind}`)[doc.kind];
    } catch (e) {
      invalid++;
      console.log(`${name}: no such kind in ${doc.apiVersion}`);
      continue;
    }
    try {
      new Model(doc).validate();
      console.log(`${name}: valid`);
    } catch (e) {
      invalid++;
      console.log(`${name}: ${e.message}`);
    }
  }
}
process.exit(invalid ? 1 : 0);
