/**
 * French. Keys are the English texts exactly as written in views/*.eta and in the routes; values
 * keep every `{placeholder}` of their key. Style: "vous", typographic apostrophes (’), a
 * no-break space (\u00a0) before : ; ? ! and inside « », and wording that does not assume the
 * reader's gender ("Déconnexion effectuée" rather than "Vous êtes déconnecté").
 */
import type { Catalog } from '../catalog.js';

export const fr: Catalog = {
  // layout.eta
  'Signed in as {user}': 'Session ouverte en tant que {user}',
  Account: 'Compte',
  Security: 'Sécurité',
  'Sign out': 'Se déconnecter',

  // login.eta, and the sign-in form's errors (routes/login.ts)
  'Sign in': 'Se connecter',
  'Sign in to continue to {client}.': 'Connectez-vous pour continuer vers {client}.',
  'Sign in to continue.': 'Connectez-vous pour continuer.',
  Username: 'Nom d’utilisateur',
  Password: 'Mot de passe',
  'Forgot your password?': 'Mot de passe oublié\u00a0?',
  or: 'ou',
  'Sign in with a passkey': 'Se connecter avec une clé d’accès',
  'Sign in with {name}': 'Se connecter avec {name}',
  'Enter your username and password.': 'Saisissez votre nom d’utilisateur et votre mot de passe.',
  'Wrong username or password.': 'Nom d’utilisateur ou mot de passe incorrect.',

  // second_factor.eta and routes/second_factor.ts
  'Confirm it’s you': 'Confirmez votre identité',
  'This needs your second factor.': 'Cette opération demande votre second facteur.',
  'One more step: your second factor.': 'Encore une étape\u00a0: votre second facteur.',
  'Code from your authenticator app': 'Code de votre application d’authentification',
  'Recovery code': 'Code de récupération',
  'The 6-digit code the app shows now, or one of your recovery codes.':
    'Le code à 6\u00a0chiffres que l’application affiche en ce moment, ou l’un de vos codes de récupération.',
  'The 6-digit code the app shows now.': 'Le code à 6\u00a0chiffres que l’application affiche en ce moment.',
  'One of the codes you saved when you set up your second factor.': 'L’un des codes que vous avez conservés lors de la configuration de votre second facteur.',
  Verify: 'Vérifier',
  'Use a passkey': 'Utiliser une clé d’accès',
  'Using a passkey needs JavaScript.': 'L’utilisation d’une clé d’accès nécessite JavaScript.',
  'Cancel and sign out': 'Annuler et se déconnecter',
  'Please sign in again': 'Veuillez vous reconnecter',
  'Your sign-ins were ended a moment ago.': 'Vos sessions ont été fermées il y a un instant.',
  'This sign-in has expired': 'Cette connexion a expiré',
  'Sign in again.': 'Reconnectez-vous.',
  'Enter the code from your authenticator app, or a recovery code.': 'Saisissez le code de votre application d’authentification, ou un code de récupération.',
  'That code was used already. Wait for the next one.': 'Ce code a déjà été utilisé. Attendez le suivant.',
  'That code isn’t right. Try again.': 'Ce code n’est pas correct. Réessayez.',
  'That passkey could not be used. Try again, or use a code.': 'Cette clé d’accès n’a pas pu être utilisée. Réessayez, ou utilisez un code.',
  'Back to sign-in': 'Retour à la connexion',
  'That passkey could not be used': 'Cette clé d’accès n’a pas pu être utilisée',
  'Try again, or sign in with your username and password.': 'Réessayez, ou connectez-vous avec votre nom d’utilisateur et votre mot de passe.',
  'The form has expired. Reload the page.': 'Le formulaire a expiré. Rechargez la page.',
  'There is no passkey to use here.': 'Aucune clé d’accès n’est utilisable ici.',
  'Passkeys are not available on this server.': 'Les clés d’accès ne sont pas disponibles sur ce serveur.',
  'This server does not use second factors.': 'Ce serveur n’utilise pas de second facteur.',

  // consent.eta and routes/authorize.ts
  'Allow {client} to access your account?': 'Autoriser {client} à accéder à votre compte\u00a0?',
  '{client} will be able to:': '{client} pourra\u00a0:',
  'Use {api} on your behalf': 'Utiliser {api} en votre nom',
  'You will be sent back to {host}.': 'Vous reviendrez ensuite sur {host}.',
  'Continue to {client}?': 'Continuer vers {client}\u00a0?',
  'An application on this computer asked to sign you in. Continue only if you just started a sign-in in {client}.':
    'Une application de cet ordinateur demande à vous connecter. Ne continuez que si vous venez de lancer une connexion dans {client}.',
  'You will be sent back to {host} on this computer.': 'Vous reviendrez ensuite sur {host}, sur cet ordinateur.',
  Deny: 'Refuser',
  Allow: 'Autoriser',
  Continue: 'Continuer',
  'Allow access': 'Autoriser l’accès',
  'Go back to the application and start again.': 'Revenez à l’application et recommencez.',
  'Unknown application': 'Application inconnue',
  'This application is no longer registered.': 'Cette application n’est plus enregistrée.',
  'Application disabled': 'Application désactivée',
  'The administrator has disabled this application.': 'L’administrateur a désactivé cette application.',
  'This sign-in link is not valid': 'Ce lien de connexion n’est pas valide',
  'The address this application asked to return to is not registered for it.':
    'L’adresse de retour demandée par cette application n’est pas enregistrée pour elle.',
  'Choose Allow or Deny': 'Choisissez Autoriser ou Refuser',
  'The answer was missing. Go back and choose again.': 'Aucune réponse n’a été reçue. Revenez en arrière et choisissez de nouveau.',
  'Application unavailable': 'Application indisponible',
  'This application is no longer registered or has been disabled.': 'Cette application n’est plus enregistrée ou a été désactivée.',
  // … the reasons an authorization request is refused on a page (oauth/authorization_request.ts, oauth/pushed_request.ts)
  'The request object this application sent is not valid.': 'L’objet de requête envoyé par cette application n’est pas valide.',
  'The request names no application (client_id is missing).': 'La demande ne désigne aucune application (client_id manquant).',
  'The request’s client_id is malformed.': 'Le client_id de la demande est mal formé.',
  'The request’s state is malformed.': 'Le state de la demande est mal formé.',
  'The application that sent you here is not registered.': 'L’application d’où vous venez n’est pas enregistrée.',
  'The application that sent you here has been disabled by the administrator.': 'L’application d’où vous venez a été désactivée par l’administrateur.',
  'The request has no redirect_uri.': 'La demande ne comporte pas de redirect_uri.',
  'The request’s request_uri is malformed.': 'Le request_uri de la demande est mal formé.',
  'This sign-in link has expired or was already used. Go back to the application and start again.':
    'Ce lien de connexion a expiré ou a déjà été utilisé. Revenez à l’application et recommencez.',
  // … what the consent and device pages list (oauth/scope.ts scopeDescriptions, describeScopes)
  'Confirm who you are (your account ID)': 'Confirmer votre identité (l’identifiant de votre compte)',
  'See your email address': 'Voir votre adresse e-mail',
  'See your name, username and other profile details': 'Voir votre nom, votre nom d’utilisateur et les autres informations de votre profil',
  'See your postal address': 'Voir votre adresse postale',
  'See your phone number': 'Voir votre numéro de téléphone',
  'Keep access when you are not using it, until the access is revoked or expires':
    'Conserver l’accès quand vous ne l’utilisez pas, jusqu’à ce qu’il soit révoqué ou qu’il expire',
  'Use the permission “{scope}”': 'Utiliser la permission «\u00a0{scope}\u00a0»',

  // continue.eta and routes/connectors.ts
  'Continuing to {name}…': 'Redirection vers {name}…',
  'Continuing to {name}': 'Redirection vers {name}',
  // form_post.eta (translated when routes/authorize.ts passes lang and t)
  'Continuing…': 'Redirection…',
  'Your browser does not run scripts: press Continue to go back to the application.':
    'Votre navigateur n’exécute pas les scripts\u00a0: appuyez sur Continuer pour revenir à l’application.',
  'If nothing happens, {link}.': 'Si rien ne se passe, {link}.',
  'continue to {name}': 'continuez vers {name}',
  'Signing in with {name} did not work': 'La connexion avec {name} n’a pas abouti',
  'Signing in with that service did not work': 'La connexion avec ce service n’a pas abouti',
  'It is not one this server signs in with.': 'Ce serveur ne propose pas ce service de connexion.',
  'This application asks for a fresh sign-in, which {name} cannot confirm. Sign in another way.':
    'Cette application demande une nouvelle connexion, que {name} ne peut pas confirmer. Connectez-vous d’une autre façon.',
  'This sign-in request is too long to continue through another service.': 'Cette demande de connexion est trop longue pour passer par un autre service.',
  'This sign-in has expired or was not started in this browser. Start again.':
    'Cette connexion a expiré ou n’a pas été commencée dans ce navigateur. Recommencez.',
  'Your sign-ins were ended a moment ago. Sign in again.': 'Vos sessions ont été fermées il y a un instant. Reconnectez-vous.',
  'Something went wrong while signing you in. Try again in a moment.': 'Un problème est survenu pendant votre connexion. Réessayez dans un instant.',
  // … what an upstream identity provider's failure says (connectors/*.ts, UpstreamError)
  'This account has been disabled.': 'Ce compte a été désactivé.',
  'Signing in this way was removed from your account. Sign in another way, or ask an administrator.':
    'Cette façon de vous connecter a été retirée de votre compte. Connectez-vous autrement, ou adressez-vous à un administrateur.',
  'No username could be chosen for your account. Ask an administrator.':
    'Aucun nom d’utilisateur n’a pu être choisi pour votre compte. Adressez-vous à un administrateur.',
  'The sign-in service could not be reached. Try again in a moment.': 'Le service de connexion est injoignable. Réessayez dans un instant.',
  'The sign-in was cancelled at the sign-in service.': 'La connexion a été annulée sur le service de connexion.',
  'The sign-in service did not answer. Try again in a moment.': 'Le service de connexion n’a pas répondu. Réessayez dans un instant.',
  'The sign-in service answered in a way that cannot be trusted. Try again.': 'La réponse du service de connexion n’est pas digne de confiance. Réessayez.',
  'The sign-in service did not say who you are.': 'Le service de connexion n’a pas indiqué qui vous êtes.',
  'The sign-in service did not ask you to sign in again. Try again.': 'Le service de connexion ne vous a pas demandé de vous reconnecter. Réessayez.',
  'GitHub answered in a way that cannot be read.': 'La réponse de GitHub est illisible.',
  'GitHub refused to say who you are. Try again.': 'GitHub a refusé d’indiquer qui vous êtes. Réessayez.',
  'GitHub could not be reached. Try again in a moment.': 'GitHub est injoignable. Réessayez dans un instant.',
  'The sign-in was cancelled at GitHub.': 'La connexion a été annulée sur GitHub.',
  'GitHub did not answer. Try again in a moment.': 'GitHub n’a pas répondu. Réessayez dans un instant.',
  'This sign-in method is not set up correctly; tell your administrator.':
    'Ce moyen de connexion n’est pas configuré correctement ; prévenez votre administrateur.',
  'This sign-in method is not set up correctly; tell your administrator (reference {reference}).':
    'Ce moyen de connexion n’est pas configuré correctement ; prévenez votre administrateur (référence {reference}).',
  'The directory that checks this password could not be reached. Try again in a moment.':
    'L’annuaire qui vérifie ce mot de passe est injoignable. Réessayez dans un instant.',
  'GitHub answered in a way that cannot be trusted. Try again.': 'La réponse de GitHub n’est pas digne de confiance. Réessayez.',
  'GitHub did not say who you are.': 'GitHub n’a pas indiqué qui vous êtes.',
  'Your GitHub account is not a member of an organization allowed to sign in here.':
    'Votre compte GitHub n’est membre d’aucune organisation autorisée à se connecter ici.',

  // activate.eta, device_confirm.eta, device_result.eta and routes/device_verification.ts
  'Connect a device': 'Connecter un appareil',
  'Enter the code shown on your device.': 'Saisissez le code affiché sur votre appareil.',
  Code: 'Code',
  'Only enter a code that you see on a device you are setting up yourself. Never enter a code that someone sent you.':
    'Ne saisissez qu’un code affiché sur un appareil que vous configurez vous-même. Ne saisissez jamais un code que quelqu’un vous a envoyé.',
  'Check that this code matches the one on your device:': 'Vérifiez que ce code correspond à celui de votre appareil\u00a0:',
  'Code {code}': 'Code {code}',
  'Where the request came from': 'Origine de la demande',
  Address: 'Adresse IP',
  'Reference for your administrator:': 'Référence pour votre administrateur\u00a0:',
  'Device software': 'Logiciel de l’appareil',
  // http/device_description.ts: the device named on the confirmation page
  '{software} on {system}': '{software} sur {system}',
  'a browser on {system}': 'un navigateur sur {system}',
  'Unknown software': 'Logiciel inconnu',
  When: 'Date',
  'If you did not start this yourself just now, choose Deny.': 'Si vous ne venez pas de faire cette demande vous-même, choisissez Refuser.',
  "You're all set": 'Tout est prêt',
  '{client} is now connected. Return to your device to continue; you can close this page.':
    '{client} est maintenant connecté. Revenez à votre appareil pour continuer\u00a0; vous pouvez fermer cette page.',
  'Request denied': 'Demande refusée',
  '{client} was not given access. Nothing was shared; you can close this page.':
    '{client} n’a reçu aucun accès. Rien n’a été partagé\u00a0; vous pouvez fermer cette page.',
  'Confirm access': 'Confirmer l’accès',
  'Device connected': 'Appareil connecté',
  'Enter the code shown on your device. Codes have 8 letters, like BCDF-GHJK.':
    'Saisissez le code affiché sur votre appareil. Les codes comportent 8\u00a0lettres, par exemple BCDF-GHJK.',
  'Codes have letters only, without digits, accents or other signs. Check the code on your device: it looks like BCDF-GHJK.':
    'Les codes ne comportent que des lettres, sans chiffres, accents ni autres signes. Vérifiez le code affiché sur votre appareil\u00a0: il ressemble à BCDF-GHJK.',
  'Codes never contain the letters A, E, I, O, U or Y. Check each letter against the code on your device.':
    'Les codes ne contiennent jamais les lettres A, E, I, O, U ni Y. Comparez chaque lettre avec le code affiché sur votre appareil.',
  'That code is too short. Codes have 8 letters, like BCDF-GHJK.': 'Ce code est trop court. Les codes comportent 8\u00a0lettres, par exemple BCDF-GHJK.',
  'That code is too long. Codes have 8 letters, like BCDF-GHJK.': 'Ce code est trop long. Les codes comportent 8\u00a0lettres, par exemple BCDF-GHJK.',
  'That code isn’t right. Check the code on your device and try again.': 'Ce code n’est pas correct. Vérifiez le code affiché sur votre appareil et réessayez.',
  'That code has expired or has already been used. Start again on your device to get a new code.':
    'Ce code a expiré ou a déjà été utilisé. Recommencez sur votre appareil pour obtenir un nouveau code.',
  'Enter your code': 'Saisir votre code',
  'Nothing you can allow': 'Rien que vous puissiez autoriser',
  'The account has no permission for the requested access. Ask your administrator for the role it needs.':
    'Le compte n’a aucune permission pour l’accès demandé. Demandez à votre administrateur le rôle nécessaire.',
  'The account has no permission for the requested access. The device was told no.':
    'Le compte n’a aucune permission pour l’accès demandé. L’appareil a reçu un refus.',
  'Your sign-in ended before you answered. Nothing was approved.': 'Votre session a pris fin avant votre réponse. Rien n’a été approuvé.',
  'Start again': 'Recommencer',
  'The answer was missing. Go back and choose Allow or Deny.': 'Aucune réponse n’a été reçue. Revenez en arrière et choisissez Autoriser ou Refuser.',
  'Confirm it’s you first': 'Confirmez d’abord votre identité',
  'Approving this device needs your second factor. Nothing was approved.': 'Approuver cet appareil demande votre second facteur. Rien n’a été approuvé.',

  // logout.eta, logout_confirm.eta, logout_stay.eta and routes/logout.ts
  "You're signed out": 'Déconnexion effectuée',
  "You're signed out everywhere: every browser, device and app signed in as you has to sign in again.":
    'Déconnexion effectuée partout\u00a0: tous les navigateurs, appareils et applications connectés à votre compte devront se reconnecter.',
  'You can close this page.': 'Vous pouvez fermer cette page.',
  'Sign out?': 'Se déconnecter\u00a0?',
  '{client} asks to sign you out.': '{client} demande à vous déconnecter.',
  'An application asks to sign you out.': 'Une application demande à vous déconnecter.',
  'You are signed in as {user}.': 'Votre session est ouverte en tant que {user}.',
  'Stay signed in': 'Garder la session ouverte',
  "You're still signed in": 'Votre session reste ouverte',
  'Nothing changed. You can close this page.': 'Rien n’a changé. Vous pouvez fermer cette page.',
  'Signed out': 'Déconnexion',
  'Still signed in': 'Session toujours ouverte',
  'This sign-out request cannot be used': 'Cette demande de déconnexion ne peut pas être utilisée',
  'The application and the sign-in it names do not match.': 'L’application et la connexion qu’elle désigne ne correspondent pas.',
  'The application is not known here.': 'Cette application est inconnue ici.',
  'Say which application this is (client_id or id_token_hint) to be sent back to it.':
    'Indiquez de quelle application il s’agit (client_id ou id_token_hint) pour pouvoir y revenir.',
  'That address to return to is not registered for the application.': 'Cette adresse de retour n’est pas enregistrée pour l’application.',

  // forgot_password.eta, reset_password.eta, verify_email.eta and routes/password_reset.ts
  'Check your email': 'Consultez votre messagerie',
  'If an account uses that address, we sent a link to it to choose a new password. The link works once, for 30 minutes.':
    'Si un compte utilise cette adresse, nous y avons envoyé un lien pour choisir un nouveau mot de passe. Ce lien ne fonctionne qu’une fois, pendant 30\u00a0minutes.',
  'Nothing arrived? Look in your spam folder, and check that this is the address your account uses. Accounts that sign in through another identity provider have no password here to reset.':
    'Vous n’avez rien reçu\u00a0? Regardez dans vos courriers indésirables et vérifiez qu’il s’agit bien de l’adresse de votre compte. Les comptes qui se connectent par un autre fournisseur d’identité n’ont pas de mot de passe à réinitialiser ici.',
  'Back to sign in': 'Retour à la connexion',
  "Enter the email address of your account. We'll send you a link to choose a new password.":
    'Saisissez l’adresse e-mail de votre compte. Nous vous enverrons un lien pour choisir un nouveau mot de passe.',
  Email: 'Adresse e-mail',
  'Send link': 'Envoyer le lien',
  'Your password was changed': 'Votre mot de passe a été modifié',
  'The account {username} has a new password. Every sign-in with the old one has ended: browsers, devices and apps sign in again.':
    'Le compte {username} a un nouveau mot de passe. Toutes les sessions ouvertes avec l’ancien ont été fermées\u00a0: navigateurs, appareils et applications doivent se reconnecter.',
  'Choose a new password': 'Choisissez un nouveau mot de passe',
  'Choosing a new password signs you out everywhere: every browser, device and app signed in as you.':
    'Choisir un nouveau mot de passe ferme toutes vos sessions\u00a0: sur tous les navigateurs, appareils et applications connectés à votre compte.',
  'New password': 'Nouveau mot de passe',
  'At least 8 characters.': 'Au moins 8\u00a0caractères.',
  'Change password': 'Changer le mot de passe',
  'Signing in with {services} also works for this account, and a new password does not change that.':
    'La connexion avec {services} fonctionne aussi pour ce compte, et un nouveau mot de passe n’y change rien.',
  'Remove those sign-ins too (choose this if you did not link them, or think someone else may be using one)':
    'Retirer aussi ces connexions (à choisir si vous ne les avez pas liées, ou si vous pensez que quelqu’un d’autre s’en sert)',
  'Signing in with {services} was removed from your account.': 'La connexion avec {services} a été retirée de votre compte.',
  'Signing in with {services} still works for your account, whatever its password. If you did not link it, or no longer use it, sign in and remove it on your account page.':
    'La connexion avec {services} fonctionne toujours pour votre compte, quel que soit son mot de passe. Si vous ne l’avez pas liée, ou ne vous en servez plus, connectez-vous et retirez-la depuis la page de votre compte.',
  'Your email is verified': 'Votre adresse e-mail est vérifiée',
  '{email} is confirmed as the address of your account.': 'L’adresse {email} est confirmée comme celle de votre compte.',
  'Your email changed': 'Votre adresse e-mail a changé',
  'This link was for an address your account no longer uses, so nothing was verified. Ask for a new link on your account page.':
    'Ce lien concernait une adresse que votre compte n’utilise plus\u00a0: rien n’a été vérifié. Demandez un nouveau lien depuis la page de votre compte.',
  'We sent a link to {email}. Open it within 30 minutes to confirm the address.':
    'Nous avons envoyé un lien à {email}. Ouvrez-le dans les 30\u00a0minutes pour confirmer l’adresse.',
  '{email} is confirmed already.': 'L’adresse {email} est déjà confirmée.',
  'We sent you several links already': 'Nous vous avons déjà envoyé plusieurs liens',
  'Use one of the links we sent in the last hour, or try again later.':
    'Utilisez l’un des liens envoyés au cours de la dernière heure, ou réessayez plus tard.',
  'We could not send the email': 'Nous n’avons pas pu envoyer l’e-mail',
  'The mail server did not take it. Please try again in a few minutes.':
    'Le serveur de messagerie ne l’a pas accepté. Veuillez réessayer dans quelques minutes.',
  'Email verification is not available': 'La vérification de l’adresse e-mail n’est pas disponible',
  'This server does not send email.': 'Ce serveur n’envoie pas d’e-mails.',
  'Your account': 'Votre compte',
  'Confirm your email': 'Confirmez votre adresse e-mail',
  'This link has expired or was used': 'Ce lien a expiré ou a déjà été utilisé',
  'A link to choose a new password works once, for 30 minutes. Ask for a new one.':
    'Un lien pour choisir un nouveau mot de passe ne fonctionne qu’une fois, pendant 30\u00a0minutes. Demandez-en un nouveau.',
  'Ask for a new link': 'Demander un nouveau lien',
  'A link to confirm your email works once, for 30 minutes. Ask for a new one on your account page.':
    'Un lien pour confirmer votre adresse e-mail ne fonctionne qu’une fois, pendant 30\u00a0minutes. Demandez-en un nouveau depuis la page de votre compte.',
  'Password reset is not available': 'La réinitialisation du mot de passe n’est pas disponible',
  'This server does not send email. Ask your administrator to set a new password for you.':
    'Ce serveur n’envoie pas d’e-mails. Demandez à votre administrateur de vous définir un nouveau mot de passe.',
  'Try again': 'Réessayer',
  'Enter the email address of your account.': 'Saisissez l’adresse e-mail de votre compte.',
  'For your security the form could not be accepted. Open the link in the email again.':
    'Pour votre sécurité, le formulaire n’a pas pu être accepté. Ouvrez de nouveau le lien reçu par e-mail.',
  'The new password must be 8 to 1024 characters.': 'Le nouveau mot de passe doit comporter de 8 à 1024\u00a0caractères.',
  'Back to your account': 'Retour à votre compte',

  // Error pages shared by every route (http/pages.ts, app.ts, http/form.ts)
  'This form has expired': 'Ce formulaire a expiré',
  'For your security the form could not be accepted. Go back, reload the page and try again.':
    'Pour votre sécurité, le formulaire n’a pas pu être accepté. Revenez en arrière, rechargez la page et réessayez.',
  'Page not found': 'Page introuvable',
  'There is nothing at this address.': 'Il n’y a rien à cette adresse.',
  'Too many attempts': 'Trop de tentatives',
  'Please wait 1 minute and try again.': 'Veuillez patienter 1\u00a0minute, puis réessayez.',
  'Please wait {minutes} minutes and try again.': 'Veuillez patienter {minutes}\u00a0minutes, puis réessayez.',
  'Something went wrong': 'Un problème est survenu',
  'Briefly unavailable': 'Momentanément indisponible',
  'The service is busy or restarting. Please try again in a moment.': 'Le service est occupé ou redémarre. Veuillez réessayer dans un instant.',
  'We could not finish that. Please try again in a moment.': 'Nous n’avons pas pu terminer l’opération. Veuillez réessayer dans un instant.',
  'That did not work': 'Cela n’a pas fonctionné',
  'The request is malformed.': 'La requête est mal formée.',
  'The request body is too large.': 'Le corps de la requête est trop volumineux.',
  'The request body must be application/x-www-form-urlencoded.': 'Le corps de la requête doit être au format application/x-www-form-urlencoded.',
  'A parameter is repeated.': 'Un paramètre est répété.',
  'A parameter is malformed.': 'Un paramètre est mal formé.',
};
