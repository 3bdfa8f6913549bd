// Passkey buttons (WebAuthn). Each <form data-passkey="authenticate|register" data-options="URL">
// gets its button shown; a click fetches the WebAuthn options from this server (the form's CSRF
// token in a form body, like every request here), asks the browser (SimpleWebAuthnBrowser, served
// from this server), and posts the browser's answer in the form's hidden `credential` field.
// Without JavaScript or WebAuthn the buttons stay hidden and the rest of the page still works.
(function () {
  'use strict';
  var webauthn = window.SimpleWebAuthnBrowser;
  if (!webauthn || !webauthn.browserSupportsWebAuthn()) return;

  function message(err) {
    if (err && (err.name === 'NotAllowedError' || err.name === 'AbortError')) return 'The passkey was not used. Try again when you are ready.';
    if (err && err.name === 'InvalidStateError') return 'This passkey is registered already.';
    return (err && err.message) || 'The passkey could not be used. Try again.';
  }

  document.querySelectorAll('form[data-passkey]').forEach(function (form) {
    var button = form.querySelector('[data-passkey-start]');
    var status = form.querySelector('[data-passkey-status]');
    if (!button) return;
    button.hidden = false;
    button.addEventListener('click', function () {
      status.textContent = '';
      button.disabled = true;
      var body = new URLSearchParams();
      body.set('csrf_token', form.elements.csrf_token.value);
      fetch(form.getAttribute('data-options'), { method: 'POST', body: body, credentials: 'same-origin', headers: { accept: 'application/json' } })
        .then(function (response) {
          return response.json().then(function (json) {
            if (!response.ok) throw new Error(json.error_description || 'The passkey could not be used. Reload the page and try again.');
            return json;
          });
        })
        .then(function (optionsJSON) {
          return form.getAttribute('data-passkey') === 'register'
            ? webauthn.startRegistration({ optionsJSON: optionsJSON })
            : webauthn.startAuthentication({ optionsJSON: optionsJSON });
        })
        .then(function (credential) {
          form.elements.credential.value = JSON.stringify(credential);
          status.textContent = 'Checking…';
          form.submit();
        })
        .catch(function (err) {
          status.textContent = message(err);
          button.disabled = false;
        });
    });
  });
})();
