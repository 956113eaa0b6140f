// The Runs page's upload zone (#upload): each file is sent as the raw body of one request and streamed
// to disk by the server (dashboard/ingest/uploads.py), in bounded memory at any size; then one ingest
// job starts and the page's own poll (the ingest-job store, the ingest-poll interval) follows it, as a
// retried failed upload does. Progress is the bytes sent so far; every failure is the server's one line.
(function () {
    "use strict";

    function setProps(id, props) {
        if (window.dash_clientside && window.dash_clientside.set_props) {
            window.dash_clientside.set_props(id, props);
        }
    }

    function mib(bytes) {
        return (bytes / 1048576).toFixed(1).replace(/\.0$/, "");
    }

    function show(message, failed) {
        setProps("ingest-message", {
            children: message,
            className: failed ? "mt-2 text-danger upload-error" : "mt-2 text-muted",
        });
    }

    function progress(sent, total) {
        const value = total ? Math.floor((100 * sent) / total) : 0;
        setProps("ingest-progress", {value: value, label: "upload " + value + "%", style: {display: "flex"}});
    }

    // One request; resolves with the parsed JSON answer, rejects with the server's one line.
    function send(method, url, body, onProgress) {
        return new Promise(function (resolve, reject) {
            const request = new XMLHttpRequest();
            request.open(method, url);
            if (!(body instanceof Blob)) {
                request.setRequestHeader("Content-Type", "application/json");
            }
            if (onProgress) {
                request.upload.onprogress = function (event) { onProgress(event.loaded); };
            }
            request.onload = function () {
                let answer = null;
                try { answer = JSON.parse(request.responseText); } catch (error) { answer = null; }
                if (request.status >= 200 && request.status < 300 && answer) {
                    resolve(answer);
                } else {
                    reject(new Error((answer && answer.error) || ("the server answered " + request.status)));
                }
            };
            request.onerror = function () { reject(new Error("the connection to the server was lost")); };
            request.send(body instanceof Blob ? body : JSON.stringify(body || {}));
        });
    }

    let busy = false;

    async function upload(files) {
        if (busy || !files.length) { return; }
        const zone = document.getElementById("upload");
        const limit = Number(zone && zone.dataset.maxBytes) || Infinity;
        const total = files.reduce(function (sum, file) { return sum + file.size; }, 0);
        if (total > limit) {
            show("upload too large: " + mib(total) + " MiB > limit " + mib(limit) + " MiB", true);
            return;
        }
        const nameInput = document.getElementById("run-name");
        const name = nameInput ? nameInput.value : "";
        busy = true;
        setProps("ingest-poll", {disabled: true});
        show("Uploading " + files.map(function (file) { return file.name; }).join(", ") + "…", false);
        progress(0, total);
        try {
            const opened = await send("POST", "uploads", {});
            let done = 0;
            for (const file of files) {
                const url = "uploads/" + opened.upload + "/files?name=" + encodeURIComponent(file.name);
                await send("PUT", url, file, function (loaded) { progress(done + loaded, total); });
                done += file.size;
            }
            const started = await send("POST", "uploads/" + opened.upload + "/ingest", {name: name});
            show("Ingesting " + files.map(function (file) { return file.name; }).join(", ") + "…", false);
            setProps("ingest-job", {data: started.job});
            setProps("ingest-poll", {disabled: false});
        } catch (error) {
            setProps("ingest-progress", {value: 0, label: "", style: {display: "none"}});
            show("Could not upload: " + error.message, true);
        } finally {
            busy = false;
        }
    }

    function chooseFiles() {
        const input = document.createElement("input");
        input.type = "file";
        input.multiple = true;
        input.style.display = "none";
        input.addEventListener("change", function () {
            const files = Array.from(input.files || []);
            input.remove();
            upload(files);
        });
        document.body.appendChild(input);
        input.click();
    }

    // Delegated: the zone is drawn by Dash after this script has run, and again on every visit.
    document.addEventListener("click", function (event) {
        if (event.target.closest("#upload")) { chooseFiles(); }
    });
    document.addEventListener("keydown", function (event) {
        if ((event.key === "Enter" || event.key === " ") && event.target.closest && event.target.closest("#upload")) {
            event.preventDefault();
            chooseFiles();
        }
    });
    document.addEventListener("dragover", function (event) {
        const zone = event.target.closest && event.target.closest("#upload");
        if (zone) { event.preventDefault(); zone.classList.add("upload-zone-over"); }
    });
    document.addEventListener("dragleave", function (event) {
        const zone = event.target.closest && event.target.closest("#upload");
        if (zone) { zone.classList.remove("upload-zone-over"); }
    });
    document.addEventListener("drop", function (event) {
        const zone = event.target.closest && event.target.closest("#upload");
        if (!zone) { return; }
        event.preventDefault();
        zone.classList.remove("upload-zone-over");
        upload(Array.from((event.dataTransfer && event.dataTransfer.files) || []));
    });
}());
